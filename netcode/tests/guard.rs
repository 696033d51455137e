//! Guards the crate's purity: no clock reads, threads, I/O, async runtime,
//! logging or unseeded randomness in `netcode/src`, and only pure
//! dependencies, so the same sessions build for WebAssembly and run on any
//! caller's clock.

use std::path::{Path, PathBuf};

/// Text patterns that must never appear in `netcode/src`.
const FORBIDDEN: &[&str] = &[
    "Instant",
    "SystemTime",
    "std::thread",
    "std::fs",
    "std::net",
    "std::env",
    "std::process",
    "tokio",
    "async",
    ".await",
    "tracing",
    "println!",
    "eprintln!",
    "HashMap",
    "HashSet",
    "RandomState",
    "rand::",
    "getrandom",
    "thread_local",
    "static mut",
    "Mutex",
    "RwLock",
];

/// The only crates `netcode` may depend on at run time.
const ALLOWED_DEPENDENCIES: &[&str] = &[
    "protocol",
    "engine",
    // The input buffer and tick clock shared with the relay: pure, no engine.
    "lockstep",
    "serde",
    "serde_json",
    "thiserror",
    "hdrhistogram",
    // Rejoin tokens: pure computation, no I/O, builds for wasm32.
    "hmac",
    "sha2",
];

fn offenders(text: &str) -> Vec<(usize, &'static str)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        for pat in FORBIDDEN {
            if contains_word(code, pat) {
                out.push((n + 1, *pat));
            }
        }
    }
    out
}

/// Whether `pat` occurs in `code` not followed by an identifier character
/// (`.await` matches, `.awaiting_hello` does not).
fn contains_word(code: &str, pat: &str) -> bool {
    code.match_indices(pat).any(|(i, _)| {
        !code[i + pat.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
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
fn netcode_sources_read_no_clock_and_do_no_io() {
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
        "forbidden in netcode/src:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_guard_can_fail() {
    assert_eq!(
        offenders("let t = std::time::Instant::now();"),
        vec![(1, "Instant")]
    );
    assert_eq!(offenders("tokio::spawn(async move { x.await });").len(), 3);
    assert!(offenders("// Instant::now() is never called").is_empty());
    assert!(offenders("seat.awaiting_hello_since = None;").is_empty());
    assert!(offenders("let d = now + Duration::from_millis(5);").is_empty());
}

#[test]
fn netcode_depends_only_on_pure_crates() {
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
    assert!(deps.contains(&"engine".to_string()), "{deps:?}");
    for d in &deps {
        assert!(
            ALLOWED_DEPENDENCIES.contains(&d.as_str()),
            "netcode must not depend on {d}"
        );
    }
    assert!(
        manifest.contains("default-features = false"),
        "hdrhistogram without its threads and compression"
    );
}
