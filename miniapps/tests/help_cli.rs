//! What a user meets first: the help of each program, with its examples on lines of their own as written (ready to
//! copy), and output cut short by its reader (`qmcbench list | head`) ending quietly.

mod common;
use common::qmcbench;

use std::process::{Command, Stdio};

/// `args`' standard output, which must come with exit status 0.
fn help(args: &[&str]) -> String {
    let o = qmcbench(args);
    assert!(o.status.success(), "qmcbench {args:?}: {:?}, stderr: {}", o.status, String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Every program's examples keep their lines: clap joins the lines of a doc comment's paragraph into one unless the
/// command is `verbatim_doc_comment`, and the examples then ran on inside the prose.
#[test]
fn examples_stand_on_lines_of_their_own() {
    let top = help(&["--help"]);
    for var in ["  QMC_SIMD=avx2|baseline ", "  QMC_PLANT_SLOWDOWN=<kernel>:<f> "] {
        assert!(top.lines().any(|l| l.starts_with(var)), "qmcbench --help: no line starts with '{var}':\n{top}");
    }
    for example in ["  qmcbench suite --quick ", "  qmcbench compare base/ new/ ", "  qmcbench score results/a --reference results/b "] {
        assert!(top.lines().any(|l| l.starts_with(example)), "qmcbench --help: no line starts with '{example}':\n{top}");
    }
    for k in miniapps::registry::kernels() {
        let h = help(&["run", k.name, "--help"]);
        let start = format!("  {} --", k.name);
        assert!(h.lines().any(|l| l.starts_with(&start)), "qmcbench run {} --help: no example on a line of its own:\n{h}", k.name);
    }
    let ops = help(&["run", "determinant", "--help"]);
    for op in ["ratio", "update", "delayed", "invert", "moves", "drift"] {
        assert!(ops.lines().any(|l| l.starts_with(&format!("  {op} "))), "determinant's --ops list lacks a line for {op}:\n{ops}");
    }
}

/// A reader that stops reading (here: closed before the program writes) ends the program by SIGPIPE, as it ends any
/// Unix filter, with nothing on standard error; before, `println!` panicked with a trace and exit status 101.
#[cfg(unix)]
#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let o = Command::new(env!("CARGO_BIN_EXE_qmcbench")).arg("list").stdout(writer).stderr(Stdio::piped()).output().expect("qmcbench runs");
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.is_empty(), "stderr: {e}");
    assert_eq!(o.status.signal(), Some(13), "status {:?} (13: SIGPIPE)", o.status);
}
