//! What models cost: a price table per model, overridable per seat.
