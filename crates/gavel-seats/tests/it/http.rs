//! HTTP engines against the fake model server.
