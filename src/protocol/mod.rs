//! Protocol cores (placeholder, filled below).
