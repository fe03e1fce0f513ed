//! Bounded reads of user files (to be filled in).
