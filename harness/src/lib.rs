//! The qmc-bench harness: everything the mini-apps have in common, so each mini-app only states its problem.
//!
//! - [`timing`]: warm-up and repeated runs on the host clock or with CUDA events; min/median/max/mean; the planted
//!   slowdown (`QMC_PLANT_SLOWDOWN`) that proves the regression checks.
//! - [`system`]: what machine ran (CPU, cores used, memory, GPU).
//! - [`record`]: the one result record (DESIGN.md) and its case key.
//! - [`output`]: table on stdout, JSON lines and CSV written atomically, reading records back.
//! - [`import`]: records of a GPU host brought into `results/<gpu>/`, each checked.
//! - [`machine`]: which machine a record came from, and which records a folder may take.
//! - [`runner`]: the run context a mini-app gets: chosen variants, the GPU if any, ceilings, the records so far.
//! - [`ceilings`]: copy bandwidth of the CPU and GPU, measured in the same process.
//! - [`plot`], [`compare`], [`history`]: charts and regression checks (a run against the committed history of its
//!   device in `history`), reading only records (and the instruction-count tables
//!   of `scripts/instr-check.sh`).
//! - [`score`], [`score_report`]: the procurement score of a machine against a reference machine on a fixed
//!   workload, by rule and with an interval, as text and as one HTML page.
//! - [`cli`]: the flags every program shares and the exit-code convention.

pub mod ceilings;
pub mod cli;
pub mod compare;
pub mod history;
pub mod import;
pub mod machine;
pub mod output;
pub mod plot;
pub mod record;
pub mod report;
pub mod runner;
pub mod score;
pub mod score_report;
pub mod system;
pub mod timing;

pub use record::{BytesModel, Record, Validation, Variant};
pub use runner::{Case, Runner, Work};
pub use timing::{Clock, Spread, Stats};
