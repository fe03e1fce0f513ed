//! Numbers the record can hold: finite ones only.
//!
//! JSON has no `NaN` or infinity; serde_json writes them as `null`, which the
//! record's reader then refuses, so a record holding one could no longer be
//! read. Every `f64` that reaches an event is serialized through here
//! (`#[serde(serialize_with = ...)]`): a number that is not finite is an
//! error for the writer, never a `null` on disk.

use serde::Serializer;
use serde::ser::Error as _;

/// Serializes a finite `f64`; refuses `NaN` and the infinities.
#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `serialize_with` passes a reference
pub fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    if value.is_finite() {
        serializer.serialize_f64(*value)
    } else {
        Err(S::Error::custom(format!(
            "the number {value} is not finite, and a record holds only finite numbers"
        )))
    }
}

/// [`serialize`] for an optional number (`None` is written as usual).
#[allow(clippy::ref_option)] // serde's `serialize_with` passes a reference
pub fn serialize_option<S: Serializer>(value: &Option<f64>, serializer: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) if !value.is_finite() => serialize(value, serializer),
        Some(value) => serializer.serialize_some(value),
        None => serializer.serialize_none(),
    }
}

/// Adds two sums of money without ever leaving the finite numbers: a total
/// too large for an `f64` stays at the largest one (so a budget still
/// compares against it and stops the run), and a `NaN` never spreads.
pub fn saturating_add(a: f64, b: f64) -> f64 {
    let a = if a.is_nan() { 0.0 } else { a };
    let b = if b.is_nan() { 0.0 } else { b };
    let sum = a + b;
    if sum.is_nan() {
        // +inf + -inf: no meaningful total; keep the first.
        return a.clamp(-f64::MAX, f64::MAX);
    }
    sum.clamp(-f64::MAX, f64::MAX)
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // exact figures are the point: saturation lands on f64::MAX itself
mod tests {
    use super::*;

    #[derive(serde::Serialize)]
    struct Holder {
        #[serde(serialize_with = "serialize")]
        x: f64,
        #[serde(serialize_with = "serialize_option")]
        y: Option<f64>,
    }

    #[test]
    fn finite_numbers_are_written_and_the_rest_refused() {
        let ok = Holder { x: 1e308, y: Some(-0.5) };
        assert_eq!(serde_json::to_string(&ok).ok().as_deref(), Some(r#"{"x":1e+308,"y":-0.5}"#));
        let none = Holder { x: 0.0, y: None };
        assert_eq!(serde_json::to_string(&none).ok().as_deref(), Some(r#"{"x":0.0,"y":null}"#));
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let err = serde_json::to_string(&Holder { x: bad, y: None }).err().map(|e| e.to_string());
            assert!(err.is_some_and(|e| e.contains("not finite")), "{bad}");
            assert!(serde_json::to_string(&Holder { x: 1.0, y: Some(bad) }).is_err(), "{bad}");
        }
    }

    #[test]
    fn sums_stay_finite() {
        assert_eq!(saturating_add(1e308, 1e308), f64::MAX);
        assert_eq!(saturating_add(f64::MAX, f64::MAX), f64::MAX);
        assert_eq!(saturating_add(-f64::MAX, -1e308), -f64::MAX);
        assert_eq!(saturating_add(f64::NAN, 2.0), 2.0);
        assert_eq!(saturating_add(f64::INFINITY, 1.0), f64::MAX);
        assert_eq!(saturating_add(f64::INFINITY, f64::NEG_INFINITY), f64::MAX);
        assert!((saturating_add(0.1, 0.2) - 0.3).abs() < 1e-15);
    }
}
