//! The `specstorm` binary: parses the command line and exits with the code
//! that `docs/cli.md` defines.

/// mimalloc instead of the system's allocator: the HTTP load makes and
/// drops a few small buffers per request (headers, bodies, history
/// records), and glibc's malloc and free were a sixth of its CPU; every
/// microsecond the client spends per request is taken from the service
/// it measures on a small machine.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let cli = specstorm::cli::Cli::parse_args();
    std::process::exit(specstorm::cli::main(cli).code());
}
