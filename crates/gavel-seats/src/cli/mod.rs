//! The agent CLI engines (SPEC 7): `claude`, `codex`, `opencode`, `gemini`.
