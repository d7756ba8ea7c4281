//! Writes lifeguard's CRDs as YAML: to a directory given as the only argument, or to stdout.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let out_dir = std::env::args_os().nth(1).map(PathBuf::from);
    for (file, crd) in lifeguard_api::crd::all() {
        let yaml = match lifeguard_api::crd::to_yaml(&crd) {
            Ok(yaml) => yaml,
            Err(e) => {
                eprintln!("error: cannot serialize the {file} CRD: {e}");
                return ExitCode::FAILURE;
            }
        };
        match &out_dir {
            Some(dir) => {
                let path = dir.join(file);
                if let Err(e) = std::fs::write(&path, yaml) {
                    eprintln!("error: cannot write {}: {e}", path.display());
                    return ExitCode::FAILURE;
                }
                eprintln!("wrote {}", path.display());
            }
            None => print!("---\n{yaml}"),
        }
    }
    ExitCode::SUCCESS
}
