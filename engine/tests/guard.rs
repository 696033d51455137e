//! Guards the crate's purity: no platform transcendental functions (all go
//! through `libm`), no clocks, no unseeded randomness, no hash-map
//! iteration, no I/O, and only the allowed dependencies.

use std::path::Path;

/// Text patterns that must never appear in `engine/src`.
const FORBIDDEN: &[&str] = &[
    ".sin(",
    ".cos(",
    ".tan(",
    ".asin(",
    ".acos(",
    ".atan(",
    ".atan2(",
    ".sin_cos(",
    ".sinh(",
    ".cosh(",
    ".tanh(",
    ".sqrt(",
    ".cbrt(",
    ".hypot(",
    ".powf(",
    ".powi(",
    ".exp(",
    ".exp2(",
    ".exp_m1(",
    ".ln(",
    ".ln_1p(",
    ".log(",
    ".log2(",
    ".log10(",
    ".mul_add(",
    "f64::consts::E",
    "std::time",
    "Instant",
    "SystemTime",
    "HashMap",
    "HashSet",
    "RandomState",
    "rand::",
    "thread_rng",
    "getrandom",
    "std::fs",
    "std::net",
    "std::env",
    "std::thread",
    "tokio",
    "static mut",
    "thread_local",
];

fn offenders(text: &str) -> Vec<(usize, &'static str)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for pat in FORBIDDEN {
            if line.contains(pat) {
                out.push((n + 1, *pat));
            }
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn engine_sources_use_only_pure_deterministic_facilities() {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    assert!(files.len() > 10, "found the sources");
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read source");
        for (line, pat) in offenders(&text) {
            bad.push(format!("{}:{line}: {pat}", f.display()));
        }
    }
    assert!(
        bad.is_empty(),
        "forbidden calls in engine/src:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_guard_can_fail() {
    assert_eq!(offenders("let d = x.sqrt();").len(), 1);
    assert_eq!(offenders("let a = y.atan2(x);"), vec![(1, ".atan2(")]);
    assert_eq!(offenders("use std::collections::HashMap;").len(), 1);
    assert_eq!(offenders("let t = std::time::Instant::now();").len(), 2);
    assert!(offenders("let d = libm::sqrt(x); let s = libm::sin(a);").is_empty());
}

#[test]
fn engine_depends_only_on_pure_crates() {
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
            .expect("manifest");
    let mut section = String::new();
    let mut deps = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_string();
        } else if section == "[dependencies]" && !line.is_empty() && !line.starts_with('#') {
            deps.push(line.split(['=', '.', ' ']).next().unwrap_or("").to_string());
        }
    }
    // miniz_oxide: pure deflate (no I/O, no_std), for the state transfer;
    // protocol uses it already.
    let allowed = [
        "protocol",
        "serde",
        "serde_json",
        "thiserror",
        "libm",
        "miniz_oxide",
    ];
    for d in &deps {
        assert!(
            allowed.contains(&d.as_str()),
            "engine must not depend on {d}"
        );
    }
    assert!(deps.contains(&"libm".to_string()));
}
