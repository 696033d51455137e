//! The browser side served by the real server: the lobby page, the browser
//! guest page and every JavaScript module, with their content types, the
//! configured game URL, and nothing fetched from elsewhere.

mod common;

use common::TestServer;

async fn get(srv: &TestServer, path: &str) -> (u16, String, String) {
    let res = srv.get(path).await;
    let status = res.status().as_u16();
    let ct = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, ct, res.text().await.unwrap())
}

#[tokio::test]
async fn pages_and_modules_are_served_with_their_types() {
    let srv = TestServer::start().await;
    let (status, ct, lobby) = get(&srv, "/").await;
    assert_eq!(status, 200);
    assert_eq!(ct, "text/html; charset=utf-8");
    assert!(lobby.contains("<table id=\"sessions\">"));
    assert!(lobby.contains("<meta name=\"campfire-game-url\" content=\"/play?code={code}\">"));
    assert!(lobby.contains(&format!(
        "<meta name=\"campfire-build\" content=\"{}\">",
        lobby_server::web::BUILD_VERSION
    )));

    let (status, ct, play) = get(&srv, "/play?code=ABCDEFGH").await;
    assert_eq!((status, ct.as_str()), (200, "text/html; charset=utf-8"));
    assert!(play.contains("<canvas id=\"view\""));

    let (status, ct, host) = get(&srv, "/host?name=x&bot=1").await;
    assert_eq!((status, ct.as_str()), (200, "text/html; charset=utf-8"));
    assert!(host.contains("<form id=\"host-form\""));
    assert!(host.contains("<canvas id=\"view\""));
    assert!(lobby.contains("href=\"/host\""));

    for module in [
        "/web/lobby.js",
        "/web/play.js",
        "/web/lib/index.js",
        "/web/lib/facts.js",
        "/web/lib/name.js",
        "/web/lib/lobby-client.js",
        "/web/lib/wasm.js",
        "/web/lib/guest-driver.js",
        "/web/host.js",
        "/web/lib/browser-host.js",
        "/web/lib/host-worker.js",
        "/web/lib/render/index.js",
        "/web/lib/render/raycast.js",
    ] {
        let (status, ct, body) = get(&srv, module).await;
        assert_eq!(status, 200, "{module}");
        assert_eq!(ct, "text/javascript; charset=utf-8", "{module}");
        assert!(
            body.contains("export") || body.contains("import"),
            "{module}"
        );
    }
    let (status, ct, _) = get(&srv, "/web/style.css").await;
    assert_eq!((status, ct.as_str()), (200, "text/css; charset=utf-8"));

    // The WebAssembly module: its type, its magic number, and a policy
    // that lets this origin compile it and nothing looser.
    let res = srv.get("/web/campfire.wasm").await;
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.headers()["content-type"], "application/wasm");
    let csp = res.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        csp.contains("script-src 'self' 'wasm-unsafe-eval';"),
        "{csp}"
    );
    assert!(
        !csp.contains("unsafe-inline") && !csp.contains("'unsafe-eval'"),
        "{csp}"
    );
    let wasm = res.bytes().await.unwrap();
    assert_eq!(&wasm[..4], b"\0asm");
    assert_eq!(wasm.len(), include_bytes!("../../web/campfire.wasm").len());

    // Everything loads from this origin: no CDN, no remote script or style.
    for page in [&lobby, &play] {
        assert!(!page.contains("http://") && !page.contains("https://"));
    }
    let res = srv.get("/").await;
    let csp = res.headers()["content-security-policy"].to_str().unwrap();
    assert!(csp.starts_with("default-src 'self'"), "{csp}");
    assert_eq!(res.headers()["x-content-type-options"], "nosniff");
    assert!(
        !csp.contains("connect-src"),
        "the lobby fetches from its origin only: {csp}"
    );
    // The play page may fetch a replay file from any http(s) URL, and
    // still runs only this origin's scripts.
    let res = srv.get("/play").await;
    let csp = res.headers()["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("connect-src 'self' http: https:;"), "{csp}");
    assert!(
        csp.contains("script-src 'self' 'wasm-unsafe-eval';"),
        "{csp}"
    );

    // Unknown paths under /web/ are the API's JSON 404.
    let (status, ct, _) = get(&srv, "/web/nope.js").await;
    assert_eq!((status, ct.as_str()), (404, "application/json"));
}

#[tokio::test]
async fn the_game_url_is_configurable() {
    let srv = TestServer::start_with(|c| {
        c.game_url = "https://game.example/play?code={code}&from=lobby".into();
    })
    .await;
    let (_, _, lobby) = get(&srv, "/").await;
    assert!(lobby.contains(
        "<meta name=\"campfire-game-url\" content=\"https://game.example/play?code={code}&amp;from=lobby\">"
    ));
}

#[test]
fn a_game_url_without_a_code_is_refused() {
    use clap::Parser;
    let err =
        lobby_server::Config::try_parse_from(["lobby-server", "--game-url", "https://x.example/"])
            .unwrap_err();
    assert!(err.to_string().contains("{code}"), "{err}");
    let ok = lobby_server::Config::try_parse_from(["lobby-server", "--game-url", "/g?c={code}"])
        .unwrap();
    assert_eq!(ok.game_url, "/g?c={code}");
}
