#![forbid(unsafe_code)]
//! The `muster` binary: everything, from parsing the command line on, is in the library
//! ([`muster::cli::main`]).

fn main() -> std::process::ExitCode {
    muster::cli::main()
}
