//! GPU engine (placeholder while the CPU path is built).
