//! Daemon flags read `CAMPFIRE_*` variables (as the lobby server's read
//! `LOBBY_*`), and a flag given wins over its variable. Each run here is
//! refused while its flags are checked, before anything binds or calls the
//! lobby.

use std::process::{Command, Output};

/// `host-daemon ARGS` with `vars`, and no other `CAMPFIRE_` variable from
/// the caller's environment.
fn daemon(args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_host-daemon"));
    for (key, _) in std::env::vars() {
        if key.starts_with("CAMPFIRE_") {
            cmd.env_remove(key);
        }
    }
    cmd.args(args).envs(vars.iter().copied());
    cmd.output().expect("host-daemon runs")
}

/// Its refusal: it failed, saying `says`.
fn refused(out: &Output, says: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "it ran: {stderr}");
    assert!(stderr.contains(says), "expected {says:?} in: {stderr}");
}

#[test]
fn variables_stand_for_flags_the_command_line_leaves_out() {
    let out = daemon(
        &["host"],
        &[
            ("CAMPFIRE_SERVER", "http://127.0.0.1:9"),
            ("CAMPFIRE_MAX_PLAYERS", "2"),
            ("CAMPFIRE_START_WHEN", "3"),
        ],
    );
    refused(
        &out,
        "--max-players 2 leaves 0 guest seats, fewer than --start-when 3",
    );
    let out = daemon(
        &["relay"],
        &[
            ("CAMPFIRE_SERVER", "http://127.0.0.1:9"),
            ("CAMPFIRE_INPUT_DELAY", "99"),
        ],
    );
    refused(&out, "--input-delay must be between");
}

#[test]
fn a_flag_given_wins_over_its_variable() {
    // The variable's delay alone is refused (above); with a good one on
    // the command line the checks go on to the next flag, which is bad.
    let out = daemon(
        &[
            "relay",
            "--server",
            "http://127.0.0.1:9",
            "--input-delay",
            "4",
            "--snapshot-every",
            "10",
        ],
        &[("CAMPFIRE_INPUT_DELAY", "99")],
    );
    refused(&out, "--snapshot-every must be between");
}

#[test]
fn a_variable_that_does_not_parse_is_refused_by_its_name() {
    let out = daemon(
        &["relay", "--server", "http://127.0.0.1:9"],
        &[("CAMPFIRE_UDP_PORT", "many")],
    );
    refused(&out, "--udp-port");
}
