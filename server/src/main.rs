#![forbid(unsafe_code)]
//! The `muster` binary: parse the command line, start logging, run the command. Everything else is in
//! the library.

use std::process::ExitCode;

use clap::Parser as _;
use muster::cli::Cli;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let muster::cli::Command::SandboxExec(args) = &cli.command {
        // The agent's exec step: still single-threaded (no runtime, no logging thread), so the sandbox
        // covers the whole process that becomes the agent. Returns only on failure.
        let e = muster::sandbox::exec::run(&args.policy, &args.program, &args.args);
        eprintln!("error: {e}");
        return ExitCode::from(126);
    }
    muster::telemetry::init(cli.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(muster::cli::run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line naming the problem and the fix; the context chain is joined with ": ".
            let message = format!("{e:#}").replace('\n', " ");
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
