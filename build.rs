//! Generates Rust types (with RIHS01 type hashes) for the ROS 2 interfaces in msg/, srv/ and
//! action/, plus the lifecycle_msgs messages and rcl_interfaces' Log in ros/overrides/ (see
//! the note in each package.xml). `HIROZ_MSG_PATH` may be set from outside to add more packages.

use std::path::PathBuf;

fn main() {
    let manifest =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    for dir in ["msg", "srv", "action", "package.xml", "ros/overrides"] {
        println!("cargo:rerun-if-changed={dir}");
    }
    println!("cargo:rerun-if-env-changed=HIROZ_MSG_PATH");
    let mut path = vec![
        manifest.display().to_string(),
        manifest
            .join("ros/overrides/lifecycle_msgs")
            .display()
            .to_string(),
        manifest
            .join("ros/overrides/rcl_interfaces")
            .display()
            .to_string(),
    ];
    if let Ok(extra) = std::env::var("HIROZ_MSG_PATH") {
        path.extend(extra.split(':').filter(|p| !p.is_empty()).map(String::from));
    }
    // SAFETY: build scripts are single-threaded; the generator reads this variable.
    unsafe { std::env::set_var("HIROZ_MSG_PATH", path.join(":")) };
    if let Err(e) = hiroz_codegen::generate_user_messages(&out_dir, false) {
        panic!("generating ROS 2 interface types failed: {e:#}");
    }
    build_commit(&manifest);
}

/// `IRON_BUILD_COMMIT`: the commit this build was made from (`iron bench` prints it), or
/// `unknown` outside a git checkout. Rebuilt when HEAD moves.
fn build_commit(manifest: &std::path::Path) {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(manifest)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--short=8", "HEAD"]).unwrap_or_else(|| "unknown".into());
    // Only paths that exist: a missing one would rerun this script on every build.
    for path in ["HEAD", "refs/heads"] {
        if let Some(p) = git(&["rev-parse", "--git-path", path]) {
            let p = manifest.join(p);
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
    }
    println!("cargo:rustc-env=IRON_BUILD_COMMIT={commit}");
}
