//! What models cost: a price table per model, overridable per seat.
//!
//! Prices are list prices in USD per million tokens for standard (non-batch,
//! non-cached) input and output. A seat's `price` key overrides the table;
//! a model the table does not know has no cost (`None`), never a guess of 0.
//!
//! Lookup is by exact name first, then by the longest known name the model
//! starts with, ending at a separator (`-`, `_`, `@`, `:`), so dated or
//! tagged names (`claude-sonnet-4-5-20250929`, `gpt-4o-2024-08-06`,
//! `claude-sonnet-4-5@20250929`) find their family. Provider prefixes
//! (`anthropic/`, `openai/`, `models/`, `openrouter/anthropic/`) are ignored.

use gavel_domain::Price;

/// Known models: name → (input, output) USD per million tokens.
const TABLE: &[(&str, f64, f64)] = &[
    // Anthropic
    ("claude-opus-4-5", 5.0, 25.0),
    ("claude-opus-4-1", 15.0, 75.0),
    ("claude-opus-4", 15.0, 75.0),
    ("claude-sonnet-4-5", 3.0, 15.0),
    ("claude-sonnet-4", 3.0, 15.0),
    ("claude-haiku-4-5", 1.0, 5.0),
    ("claude-3-7-sonnet", 3.0, 15.0),
    ("claude-3-5-sonnet", 3.0, 15.0),
    ("claude-3-5-haiku", 0.8, 4.0),
    ("claude-3-opus", 15.0, 75.0),
    ("claude-3-sonnet", 3.0, 15.0),
    ("claude-3-haiku", 0.25, 1.25),
    // OpenAI
    ("gpt-5.2", 1.75, 14.0),
    ("gpt-5.2-pro", 21.0, 168.0),
    ("gpt-5.1", 1.25, 10.0),
    ("gpt-5.1-codex", 1.25, 10.0),
    ("gpt-5.1-codex-max", 1.25, 10.0),
    ("gpt-5.1-codex-mini", 0.25, 2.0),
    ("gpt-5", 1.25, 10.0),
    ("gpt-5-codex", 1.25, 10.0),
    ("gpt-5-mini", 0.25, 2.0),
    ("gpt-5-nano", 0.05, 0.4),
    ("gpt-5-pro", 15.0, 120.0),
    ("gpt-4.1", 2.0, 8.0),
    ("gpt-4.1-mini", 0.4, 1.6),
    ("gpt-4.1-nano", 0.1, 0.4),
    ("gpt-4o", 2.5, 10.0),
    ("gpt-4o-mini", 0.15, 0.6),
    ("gpt-4-turbo", 10.0, 30.0),
    ("gpt-3.5-turbo", 0.5, 1.5),
    ("o4-mini", 1.1, 4.4),
    ("o3", 2.0, 8.0),
    ("o3-pro", 20.0, 80.0),
    ("o3-mini", 1.1, 4.4),
    ("o1", 15.0, 60.0),
    ("o1-pro", 150.0, 600.0),
    ("o1-mini", 1.1, 4.4),
    ("codex-mini-latest", 1.5, 6.0),
    // Google (prompts up to 200k tokens)
    ("gemini-3-pro-preview", 2.0, 12.0),
    ("gemini-3-pro", 2.0, 12.0),
    ("gemini-2.5-pro", 1.25, 10.0),
    ("gemini-2.5-flash", 0.3, 2.5),
    ("gemini-2.5-flash-lite", 0.1, 0.4),
    ("gemini-2.0-flash", 0.1, 0.4),
    ("gemini-2.0-flash-lite", 0.075, 0.3),
    ("gemini-1.5-pro", 1.25, 5.0),
    ("gemini-1.5-flash", 0.075, 0.3),
];

/// Characters that may follow a known name in a dated or tagged model name.
const SEPARATORS: &[char] = &['-', '_', '@', ':'];

/// The list price of `model`, from gavel's table: exact name first, then the
/// longest known name it starts with (at a separator). Case-insensitive;
/// `provider/` prefixes are ignored. `None` when the table does not know it.
pub fn lookup(model: &str) -> Option<Price> {
    let lowered = model.trim().to_ascii_lowercase();
    let name = lowered.rsplit('/').next().unwrap_or(&lowered);
    if let Some(&(_, input, output)) = TABLE.iter().find(|(known, _, _)| *known == name) {
        return Some(Price { input, output });
    }
    TABLE
        .iter()
        .filter(|(known, _, _)| name.strip_prefix(known).is_some_and(|rest| rest.starts_with(SEPARATORS)))
        .max_by_key(|(known, _, _)| known.len())
        .map(|&(_, input, output)| Price { input, output })
}

/// What a request cost in USD: the seat's `price` override first, else the
/// table's price for `model`; `None` when neither knows. Rounded to a
/// millionth of a dollar, as usage totals are.
pub fn cost_usd(price: Option<Price>, model: &str, input_tokens: u64, output_tokens: u64) -> Option<f64> {
    let price = price.or_else(|| lookup(model))?;
    #[allow(clippy::cast_precision_loss)] // token counts stay far below 2^52
    let dollars = (input_tokens as f64 * price.input + output_tokens as f64 * price.output) / 1_000_000.0;
    Some((dollars * 1e6).round() / 1e6)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::float_cmp)]

    use super::*;

    #[test]
    fn exact_names_are_found() {
        assert_eq!(lookup("claude-sonnet-4-5"), Some(Price { input: 3.0, output: 15.0 }));
        assert_eq!(lookup("gpt-4o-mini"), Some(Price { input: 0.15, output: 0.6 }));
        assert_eq!(lookup("gemini-2.5-pro"), Some(Price { input: 1.25, output: 10.0 }));
    }

    #[test]
    fn dated_and_tagged_names_find_the_longest_prefix() {
        assert_eq!(lookup("claude-sonnet-4-5-20250929").unwrap().input, 3.0);
        assert_eq!(lookup("claude-opus-4-5-20251101").unwrap().input, 5.0);
        assert_eq!(lookup("claude-opus-4-20250514").unwrap().input, 15.0);
        assert_eq!(lookup("claude-sonnet-4-5@20250929").unwrap().output, 15.0);
        assert_eq!(lookup("gpt-4o-mini-2024-07-18").unwrap().input, 0.15);
        assert_eq!(lookup("gpt-4o-2024-08-06").unwrap().input, 2.5);
        assert_eq!(lookup("gemini-2.5-flash-lite-preview-06-17").unwrap().input, 0.1);
        assert_eq!(lookup("claude-3-5-haiku-latest").unwrap().input, 0.8);
    }

    #[test]
    fn provider_prefixes_and_case_are_ignored() {
        assert_eq!(lookup("anthropic/claude-haiku-4-5").unwrap().input, 1.0);
        assert_eq!(lookup("openrouter/openai/GPT-5-mini").unwrap().output, 2.0);
        assert_eq!(lookup("models/gemini-2.0-flash").unwrap().input, 0.1);
    }

    #[test]
    fn unknown_models_and_non_separator_prefixes_have_no_price() {
        assert_eq!(lookup("llama-3.1-8b"), None);
        assert_eq!(lookup("gpt-50"), None);
        assert_eq!(lookup("o3x"), None);
        assert_eq!(lookup(""), None);
    }

    #[test]
    fn cost_prefers_the_seat_override() {
        let own = Some(Price { input: 1.0, output: 2.0 });
        assert_eq!(cost_usd(own, "claude-sonnet-4-5", 1_000_000, 500_000), Some(2.0));
        assert_eq!(cost_usd(None, "claude-sonnet-4-5", 1000, 100), Some(0.0045));
        assert_eq!(cost_usd(own, "mystery-model", 2_000_000, 0), Some(2.0));
        assert_eq!(cost_usd(None, "mystery-model", 10, 10), None);
    }

    #[test]
    fn cost_is_rounded_to_a_millionth() {
        // 7 tokens at 0.15 / M = 0.00000105 → 0.000001
        assert_eq!(cost_usd(None, "gpt-4o-mini", 7, 0), Some(0.000_001));
    }
}
