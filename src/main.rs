//! The `specstorm` binary: parses the command line and exits with the code
//! that `docs/cli.md` defines.

fn main() {
    let cli = specstorm::cli::Cli::parse_args();
    std::process::exit(specstorm::cli::main(cli).code());
}
