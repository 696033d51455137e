//! The pure crates stay pure: `engine`, `netcode` and `lockstep` read no
//! clock, start no thread, do no I/O, draw no unseeded random number and
//! iterate no hash map, so the same code builds for WebAssembly, runs on any
//! caller's clock and gives every peer the same result; `engine` computes no
//! float function the platform may round differently (all go through
//! `libm`); `lockstep`, the relay, names no engine; `netcode`, `lockstep`,
//! `protocol` and `game-api` name none of the raycaster's types. Each depends
//! only on crates that keep those promises.
//!
//! A pattern matches in shipped code (not in `//` comments, not in the test
//! module, which must come last), also inside a longer name (`EngineState`,
//! `tokio_util`); a method pattern only where the name ends: `.await`
//! matches, `.awaiting_hello` does not.

mod source;

use source::{dependencies, rust_files, without_comment, workspace};

/// What no pure crate may use: clocks, threads and locks, I/O, process
/// state, async runtimes, logging, unseeded randomness, globals.
const IMPURE: &[&str] = &[
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
    "rand::",
    "thread_rng",
    "getrandom",
    "RandomState",
    "thread_local",
    "static mut",
    "Mutex",
    "RwLock",
];

/// Collections whose iteration order differs from run to run.
const UNORDERED: &[&str] = &["HashMap", "HashSet"];

/// Float functions the platform's maths library computes, with results
/// that may differ by target (the engine's go through `libm`).
const PLATFORM_MATHS: &[&str] = &[
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
];

/// What the engine alone may not use: durations and the constant `e` are
/// fine for netcode's timers, never for the simulation.
const ENGINE_ONLY: &[&str] = &["std::time", "f64::consts::E"];

/// The names of a game engine, which the relay must not have.
const ENGINE: &[&str] = &["engine", "Engine"];

/// Names of the raycaster's types and rules, which the network side and
/// the lobby must not have. Chosen so that they do not collide with the
/// envelope's own names (`ReconciliationSnapshotMessage`, `ScoreRow`'s
/// `kill_score`) or with `base64::engine`.
const RAYCASTER: &[&str] = &[
    "InputSnapshot",
    "PlayerSnapshot",
    "EnemySnapshot",
    "GameMap",
    "MapError",
    "Difficulty",
    "RaycasterEngine",
    "BotController",
    "level_gen",
    "map_io",
    "campaign_seed",
    "gameplay_seed",
    "mouse_delta",
    "_TILES",
    "Raycaster",
];

/// One pure crate and its rules.
struct Pure {
    name: &'static str,
    forbidden: &'static [&'static [&'static str]],
    /// The only crates it may depend on at run time.
    allowed: &'static [&'static str],
    /// Dependencies it must have (the point of the crate).
    required: &'static [&'static str],
}

const PURE: &[Pure] = &[
    Pure {
        name: "engine",
        forbidden: &[IMPURE, UNORDERED, PLATFORM_MATHS, ENGINE_ONLY],
        // miniz_oxide: pure deflate (no I/O, no_std), for the state transfer.
        allowed: &[
            "game-api",
            "protocol",
            "serde",
            "serde_json",
            "thiserror",
            "libm",
            "miniz_oxide",
        ],
        required: &["libm"],
    },
    Pure {
        name: "netcode",
        // No ENGINE: a session's game is `engine: Option<E>`, any game.
        forbidden: &[IMPURE, UNORDERED, RAYCASTER],
        // lockstep: the input buffer and tick clock shared with the relay;
        // hmac and sha2: rejoin tokens, pure computation.
        allowed: &[
            "game-api",
            "protocol",
            "lockstep",
            "serde",
            "serde_json",
            "thiserror",
            "hdrhistogram",
            "hmac",
            "sha2",
        ],
        required: &["game-api", "lockstep"],
    },
    Pure {
        // Tag, the second game: pure like the engine, and the raycaster's
        // names stay out of it too.
        name: "tag",
        forbidden: &[IMPURE, UNORDERED, PLATFORM_MATHS, ENGINE, RAYCASTER],
        allowed: &["game-api", "serde", "serde_json", "thiserror"],
        required: &["game-api"],
    },
    Pure {
        name: "game-api",
        forbidden: &[IMPURE, UNORDERED, ENGINE, RAYCASTER],
        allowed: &["serde"],
        required: &["serde"],
    },
    Pure {
        name: "lobby-api",
        forbidden: &[IMPURE, UNORDERED, ENGINE, RAYCASTER],
        // time: the lobby's timestamps; utoipa: the optional schemas.
        allowed: &["serde", "serde_json", "thiserror", "time", "utoipa"],
        required: &["serde"],
    },
    Pure {
        name: "protocol",
        // No ENGINE: `base64::Engine` is the encoder's trait, not a game's.
        forbidden: &[IMPURE, UNORDERED, RAYCASTER],
        // base64, miniz_oxide, postcard: the compact form and the exact
        // state's text (pure computation). flate2 (on zlib-rs): deflate
        // with a preset dictionary for delta snapshots, used on byte
        // slices only (its stream types are never touched).
        allowed: &[
            "game-api",
            "lobby-api",
            "base64",
            "flate2",
            "miniz_oxide",
            "postcard",
            "serde",
            "serde_json",
            "thiserror",
        ],
        required: &["game-api"],
    },
    Pure {
        name: "lockstep",
        forbidden: &[IMPURE, UNORDERED, ENGINE, RAYCASTER],
        allowed: &["game-api", "protocol", "serde_json", "hmac", "sha2"],
        required: &["protocol"],
    },
];

/// Whether `pat` occurs in `code`. A method pattern (`.await`) must end
/// where a name ends; any other matches inside a longer name too
/// (`EngineState`, `tokio_util`).
fn contains_word(code: &str, pat: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let method = pat.starts_with('.') && pat.chars().last().is_some_and(is_ident);
    code.match_indices(pat)
        .any(|(i, _)| !method || !code[i + pat.len()..].chars().next().is_some_and(is_ident))
}

/// Whether the test module that `rest` begins with ends the file, so
/// skipping `rest` skips only tests. Read as rustfmt lays a module out:
/// everything inside it is indented, so the only line of `rest` after its
/// opening that starts at the margin is the module's closing brace, last.
/// (Counting braces would miscount those inside the tests' strings.)
fn only_tests(rest: &str) -> bool {
    // Tests in a file of their own (`mod tests;`, scanned as any source).
    if rest.trim_end() == "#[cfg(test)]\nmod tests;" {
        return true;
    }
    let at_margin: Vec<&str> = rest
        .lines()
        .skip(2) // `#[cfg(test)]` and `mod tests {`
        .filter(|l| !l.is_empty() && !l.starts_with(char::is_whitespace))
        .collect();
    at_margin == ["}"] && rest.trim_end().ends_with('}')
}

/// The forbidden patterns in `text`, by line number.
fn offenders(text: &str, forbidden: &[&[&'static str]]) -> Vec<(usize, &'static str)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = without_comment(line);
        for pat in forbidden.iter().flat_map(|list| list.iter()) {
            if contains_word(code, pat) {
                out.push((n + 1, *pat));
            }
        }
    }
    out
}

#[test]
fn pure_crates_use_only_pure_deterministic_facilities() {
    let mut bad = Vec::new();
    for krate in PURE {
        let mut files = Vec::new();
        rust_files(&workspace().join(krate.name).join("src"), &mut files);
        assert!(files.len() >= 3, "found the sources of {}", krate.name);
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            // Tests do not ship: their module (last in the file) may time
            // and print.
            let shipped = text
                .find("#[cfg(test)]\nmod tests")
                .map_or(&text[..], |at| &text[..at]);
            assert!(
                shipped.len() == text.len() || only_tests(&text[shipped.len()..]),
                "{}: the test module must come last",
                file.display()
            );
            for (line, pat) in offenders(shipped, krate.forbidden) {
                bad.push(format!("{}:{line}: {pat}", file.display()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "forbidden in a pure crate:\n{}",
        bad.join("\n")
    );
}

#[test]
fn pure_crates_depend_only_on_pure_crates() {
    for krate in PURE {
        let manifest = workspace().join(krate.name).join("Cargo.toml");
        let manifest = std::fs::read_to_string(&manifest).unwrap();
        let deps = dependencies(&manifest);
        for d in &deps {
            assert!(
                krate.allowed.contains(&d.as_str()),
                "{} must not depend on {d}",
                krate.name
            );
        }
        for d in krate.required {
            assert!(deps.iter().any(|x| x == d), "{}: {deps:?}", krate.name);
        }
        if deps.iter().any(|d| d == "hdrhistogram") {
            assert!(
                manifest.contains("default-features = false"),
                "{}: hdrhistogram without its threads and compression",
                krate.name
            );
        }
    }
}

/// The package names of the workspace's crates, read from their manifests.
fn workspace_crates() -> Vec<String> {
    let root = std::fs::read_to_string(workspace().join("Cargo.toml")).unwrap();
    let members = root
        .lines()
        .find(|l| l.starts_with("members"))
        .expect("the workspace's members");
    members
        .split('"')
        .skip(1)
        .step_by(2)
        .map(|dir| {
            let manifest =
                std::fs::read_to_string(workspace().join(dir).join("Cargo.toml")).unwrap();
            let name = manifest
                .lines()
                .find_map(|l| l.strip_prefix("name = \""))
                .unwrap_or_else(|| panic!("{dir}: a package name"));
            name.trim_end_matches('"').to_string()
        })
        .collect()
}

#[test]
fn the_server_speaks_only_the_lobby_api() {
    let crates = workspace_crates();
    assert!(crates.len() >= 9, "{crates:?}");
    let manifest = std::fs::read_to_string(workspace().join("server/Cargo.toml")).unwrap();
    let ours: Vec<String> = dependencies(&manifest)
        .into_iter()
        .filter(|d| crates.contains(d))
        .collect();
    assert_eq!(ours, ["lobby-api"], "the server's workspace dependencies");
    let mut files = Vec::new();
    rust_files(&workspace().join("server/src"), &mut files);
    assert!(files.len() >= 20, "found the server's sources");
    let mut bad = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (line, pat) in offenders(&text, &[&["protocol::", "peer::", "wire::"], RAYCASTER]) {
            bad.push(format!("{}:{line}: {pat}", file.display()));
        }
    }
    assert!(
        bad.is_empty(),
        "the server names the peer side:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_guard_can_fail() {
    let all: &[&[&str]] = &[IMPURE, UNORDERED, PLATFORM_MATHS, ENGINE];
    assert_eq!(offenders("let d = x.sqrt();", all), [(1, ".sqrt(")]);
    assert_eq!(offenders("let a = y.atan2(x);", all), [(1, ".atan2(")]);
    assert_eq!(offenders("use std::collections::HashMap;", all).len(), 1);
    assert_eq!(
        offenders("let t = std::time::Instant::now();", all),
        [(1, "Instant")]
    );
    assert_eq!(
        offenders("tokio::spawn(async move { x.await });", all).len(),
        3
    );
    assert_eq!(offenders("use engine::Engine;", all).len(), 2);
    assert_eq!(offenders("struct EngineState;", all), [(1, "Engine")]);
    assert_eq!(offenders("use tokio_util::sync;", all), [(1, "tokio")]);
    assert_eq!(
        offenders("use engine::wire::input::InputSnapshot;", &[RAYCASTER]),
        [(1, "InputSnapshot")]
    );
    assert!(offenders("use base64::engine::general_purpose;", &[RAYCASTER]).is_empty());
    assert!(offenders("msg: ReconciliationSnapshotMessage,", &[RAYCASTER]).is_empty());
    assert!(only_tests("#[cfg(test)]\nmod tests {\n    fn a() {}\n}\n"));
    assert!(only_tests(
        "#[cfg(test)]\nmod tests {\n    const J: &str = r#\"{\"a\":{}\"#;\n}\n"
    ));
    assert!(!only_tests(
        "#[cfg(test)]\nmod tests {\n}\n\nfn shipped() {}\n"
    ));
    assert!(offenders("let d = libm::sqrt(x); let s = libm::sin(a);", all).is_empty());
    assert!(offenders("// Instant::now() is never called", all).is_empty());
    assert!(offenders("seat.awaiting_hello_since = None;", all).is_empty());
    assert!(offenders("let d = now + Duration::from_millis(5);", all).is_empty());
    assert_eq!(
        dependencies(
            "[dependencies]\nlibm = \"0.2\"\nserde.workspace = true\n[dev-dependencies]\nx = \"1\""
        ),
        ["libm", "serde"]
    );
}
