//! Retrying: how often to try again and how long to wait in between.
//!
//! Connect errors, 429 and 5xx are tried again, up to [`RetryPolicy::attempts`]
//! attempts in all, waiting either what the server asked (`retry-after-ms`,
//! `retry-after` in seconds or as an HTTP-date) or an exponential backoff
//! with full jitter. The caller never waits past the request's deadline.

use std::time::Duration;

use reqwest::header::HeaderMap;

/// How an HTTP seat retries failed attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first one included (at least 1).
    pub attempts: u32,
    /// The backoff ceiling of the first retry; it doubles with each retry.
    pub base: Duration,
    /// The largest backoff ceiling, and the longest `retry-after` honoured
    /// without giving up.
    pub cap: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self { attempts: 4, base: Duration::from_millis(500), cap: Duration::from_secs(30) }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (0 for the first retry): a
    /// uniformly random duration between zero and
    /// `min(cap, base * 2^retry)` ("full jitter").
    pub fn backoff(&self, retry: u32, rng: &mut fastrand::Rng) -> Duration {
        let ceiling = self.ceiling(retry);
        let millis = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(rng.u64(0..=millis))
    }

    /// The largest backoff of retry number `retry`.
    pub fn ceiling(&self, retry: u32) -> Duration {
        let factor = 1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX);
        self.base.saturating_mul(factor).min(self.cap)
    }
}

/// How long the server asked to wait, from `retry-after-ms` (milliseconds)
/// or `retry-after` (whole seconds, or an HTTP-date compared with `now`).
/// A date in the past means "now" (zero). Unreadable values are ignored.
pub fn retry_after(headers: &HeaderMap, now: jiff::Timestamp) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::try_from_secs_f64(ms / 1000.0).unwrap_or(Duration::MAX));
    }
    let value = text("retry-after")?;
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    if let Ok(seconds) = value.parse::<f64>() {
        // Too large for a `Duration`: as good as forever (the caller gives up).
        return (seconds.is_finite() && seconds >= 0.0)
            .then(|| Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX));
    }
    let date = jiff::fmt::rfc2822::DateTimeParser::new().parse_timestamp(value).ok()?;
    let millis = date.as_millisecond().saturating_sub(now.as_millisecond());
    Some(Duration::from_millis(u64::try_from(millis).unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    fn at(text: &str) -> jiff::Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn retry_after_in_seconds() {
        let now = at("2025-01-01T00:00:00Z");
        assert_eq!(retry_after(&headers(&[("retry-after", "3")]), now), Some(Duration::from_secs(3)));
        assert_eq!(retry_after(&headers(&[("retry-after", " 0 ")]), now), Some(Duration::ZERO));
        assert_eq!(retry_after(&headers(&[("retry-after", "1.5")]), now), Some(Duration::from_millis(1500)));
    }

    #[test]
    fn retry_after_as_an_http_date() {
        let now = at("2015-10-21T07:28:00Z");
        let later = headers(&[("retry-after", "Wed, 21 Oct 2015 07:28:07 GMT")]);
        assert_eq!(retry_after(&later, now), Some(Duration::from_secs(7)));
        let past = headers(&[("retry-after", "Wed, 21 Oct 2015 07:27:00 GMT")]);
        assert_eq!(retry_after(&past, now), Some(Duration::ZERO));
    }

    #[test]
    fn retry_after_ms_wins_and_garbage_is_ignored() {
        let now = at("2025-01-01T00:00:00Z");
        let both = headers(&[("retry-after-ms", "250"), ("retry-after", "9")]);
        assert_eq!(retry_after(&both, now), Some(Duration::from_millis(250)));
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")]), now), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "-4")]), now), None);
        assert_eq!(retry_after(&HeaderMap::new(), now), None);
        let bad_ms = headers(&[("retry-after-ms", "NaN"), ("retry-after", "2")]);
        assert_eq!(retry_after(&bad_ms, now), Some(Duration::from_secs(2)));
    }

    #[test]
    fn an_absurd_retry_after_does_not_panic() {
        let now = at("2025-01-01T00:00:00Z");
        assert_eq!(retry_after(&headers(&[("retry-after", "1e30")]), now), Some(Duration::MAX));
        assert_eq!(retry_after(&headers(&[("retry-after-ms", "1e300")]), now), Some(Duration::MAX));
    }

    #[test]
    fn backoff_stays_within_its_doubling_ceiling() {
        let policy =
            RetryPolicy { attempts: 4, base: Duration::from_millis(100), cap: Duration::from_millis(700) };
        assert_eq!(policy.ceiling(0), Duration::from_millis(100));
        assert_eq!(policy.ceiling(1), Duration::from_millis(200));
        assert_eq!(policy.ceiling(2), Duration::from_millis(400));
        assert_eq!(policy.ceiling(3), Duration::from_millis(700));
        assert_eq!(policy.ceiling(40), Duration::from_millis(700));
        let mut rng = fastrand::Rng::with_seed(7);
        let mut seen_low = false;
        let mut seen_high = false;
        for _ in 0..500 {
            let wait = policy.backoff(2, &mut rng);
            assert!(wait <= Duration::from_millis(400), "{wait:?}");
            seen_low |= wait < Duration::from_millis(100);
            seen_high |= wait > Duration::from_millis(300);
        }
        assert!(seen_low && seen_high, "full jitter spreads over the whole range");
    }
}
