//! GPU engine: see stage B.
