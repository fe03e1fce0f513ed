//! The HTTP API engines (SPEC 7): `anthropic` and `openai`.
