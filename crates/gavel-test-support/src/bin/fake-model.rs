//! Placeholder until the fake model server lands.
fn main() {}
