//! Guarded, atomic writes inside a workspace (to be filled in).
