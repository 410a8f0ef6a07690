//! Simulator (placeholder).
