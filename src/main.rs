//! The `specstorm` binary: parses the command line and exits with the code
//! that `docs/cli.md` defines.

use clap::Parser;

fn main() {
    let cli = specstorm::cli::Cli::parse();
    std::process::exit(specstorm::cli::main(cli).code());
}
