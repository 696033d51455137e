//! Guards what makes the relay a relay: `lockstep` depends on no engine
//! (only `protocol`, the wire types, `serde_json`, and `hmac` and `sha2`
//! for rejoin tokens), so
//! nothing in it can run a game; and like `netcode` it reads no clock and
//! does no I/O, so it builds for WebAssembly and runs on a virtual clock.

use std::path::Path;

/// Words that must never appear in `lockstep/src` code.
const FORBIDDEN: &[&str] = &[
    "engine",
    "Engine",
    "Instant",
    "SystemTime",
    "std::thread",
    "std::fs",
    "std::net",
    "tokio",
    "async",
    "HashMap",
    "println!",
];

fn manifest_dependencies() -> Vec<String> {
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
            .expect("manifest");
    let mut section = "";
    let mut deps = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
        } else if section == "[dependencies]" && !line.is_empty() && !line.starts_with('#') {
            deps.push(line.split(['=', '.', ' ']).next().unwrap_or("").to_string());
        }
    }
    deps
}

fn offenders(code: &str) -> Vec<String> {
    code.lines()
        .enumerate()
        .flat_map(|(n, line)| {
            let code = line.split("//").next().unwrap_or("");
            FORBIDDEN
                .iter()
                .filter(move |w| code.contains(**w))
                .map(move |w| format!("line {}: {w}", n + 1))
        })
        .collect()
}

#[test]
fn lockstep_depends_on_no_engine() {
    assert_eq!(
        manifest_dependencies(),
        ["protocol", "serde_json", "hmac", "sha2"].map(String::from)
    );
}

#[test]
fn lockstep_sources_name_no_engine_clock_or_io() {
    let mut bad = Vec::new();
    let mut dirs = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
    let mut files = 0;
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).expect("src dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            files += 1;
            let text = std::fs::read_to_string(&path).expect("source");
            bad.extend(
                offenders(&text)
                    .into_iter()
                    .map(|o| format!("{}: {o}", path.display())),
            );
        }
    }
    assert!(files >= 8, "found the sources");
    assert!(
        bad.is_empty(),
        "forbidden in lockstep/src:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_guard_can_fail() {
    assert_eq!(offenders("use engine::Engine;").len(), 2);
    assert!(offenders("// no engine here").is_empty());
}
