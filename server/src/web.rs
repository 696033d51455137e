//! The browser side, served from the binary: the public lobby page at `/`,
//! the built-in browser guest at `/play`, the moderators' page at `/admin`
//! (only with `--admin-token-file`), and the JavaScript modules and
//! stylesheet under `/web/`. Every asset is embedded at compile time from
//! the repository's `web/` folder (no CDN, nothing fetched at run time).
//!
//! The two pages carry the server's configuration in `<meta>` tags: the
//! game URL template (`--game-url`) the lobby's Join buttons open, and the
//! build identifier the "compatible with my build" filter and the browser
//! guest's handshake use.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::state::AppState;

/// The build identifier of this workspace (shared with `host-daemon`'s
/// version handshake through `lobby-api`).
pub use lobby_api::BUILD_VERSION;

/// One embedded file: its URL path, content type and bytes.
struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

const JS: &str = "text/javascript; charset=utf-8";

/// An embedded file of the repository's `web/` folder, served at `/web/…`.
macro_rules! asset {
    ($file:literal, $content_type:expr) => {
        Asset {
            path: concat!("/web/", $file),
            content_type: $content_type,
            body: include_bytes!(concat!("../../web/", $file)),
        }
    };
    ($file:literal) => {
        asset!($file, JS)
    };
}

/// Everything under `/web/`.
const ASSETS: &[Asset] = &[
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("lobby.js"),
    asset!("play.js"),
    asset!("host.js"),
    asset!("lib/index.js"),
    asset!("lib/facts.js"),
    asset!("lib/name.js"),
    asset!("lib/lobby-client.js"),
    asset!("lib/lobby-error.js"),
    asset!("lib/lobby-events.js"),
    asset!("lib/webrtc.js"),
    asset!("lib/guest-driver.js"),
    asset!("lib/wasm.js"),
    asset!("lib/controls.js"),
    asset!("lib/departures.js"),
    asset!("lib/game-screen.js"),
    asset!("lib/browser-host.js"),
    asset!("lib/host-links.js"),
    asset!("lib/host-worker.js"),
    asset!("lib/replay-page.js"),
    asset!("lib/replay-file.js"),
    asset!("lib/report-dialog.js"),
    asset!("lib/replay-player.js"),
    asset!("lib/settings.js"),
    asset!("lib/settings-panel.js"),
    asset!("lib/gamepad.js"),
    asset!("lib/touch.js"),
    asset!("lib/invite.js"),
    asset!("lib/sound.js"),
    asset!("lib/view-sounds.js"),
    asset!("lib/game-tools.js"),
    asset!("lib/netgraph.js"),
    // The engine and guest session in WebAssembly (web-bindings; rebuilt
    // and checked byte for byte by scripts/build-wasm).
    asset!("campfire.wasm", "application/wasm"),
    // The first-person renderer.
    asset!("lib/render/index.js"),
    asset!("lib/render/automap.js"),
    asset!("lib/render/effects.js"),
    asset!("lib/render/grid.js"),
    asset!("lib/render/hud.js"),
    asset!("lib/render/interpolate.js"),
    asset!("lib/render/palette.js"),
    asset!("lib/render/projection.js"),
    asset!("lib/render/raycast.js"),
    asset!("lib/render/sprite-art.js"),
    asset!("lib/render/sprites.js"),
    asset!("lib/render/surface.js"),
    asset!("lib/render/textures.js"),
    asset!("lib/render/weapon.js"),
    asset!("lib/render/world-buffer.js"),
];

const LOBBY_HTML: &str = include_str!("../../web/lobby.html");
const PLAY_HTML: &str = include_str!("../../web/play.html");
const HOST_HTML: &str = include_str!("../../web/host.html");
const ADMIN_HTML: &str = include_str!("../../web/admin.html");
/// The moderators' page's script, served only when the admin API is on.
const ADMIN_JS: &[u8] = include_bytes!("../../web/admin.js");
/// The game's markup (view, HUD, end-of-run table), one copy for both game
/// pages.
const GAME_HTML: &str = include_str!("../../web/game.html");

/// The placeholder in every page that [`page`] replaces with the meta tags.
const CONFIG_PLACEHOLDER: &str = "<!--campfire-config-->";

/// The placeholder in the game pages that [`page`] replaces with
/// [`GAME_HTML`].
const GAME_PLACEHOLDER: &str = "<!--campfire-game-->";

/// Escapes text for a double-quoted HTML attribute.
fn attr_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            _ => out.push(c),
        }
    }
    out
}

/// A page with the server's configuration filled in, and the game's markup
/// where it has a place for it.
fn page(template: &str, game_url: &str) -> String {
    let meta = format!(
        "<meta name=\"campfire-build\" content=\"{}\">\n    <meta name=\"campfire-game-url\" content=\"{}\">",
        attr_escape(BUILD_VERSION),
        attr_escape(game_url)
    );
    template
        .replacen(CONFIG_PLACEHOLDER, &meta, 1)
        .replacen(GAME_PLACEHOLDER, GAME_HTML, 1)
}

/// The content security policy of every embedded file: everything from
/// this origin; the pages hold no inline script; WebAssembly may be
/// compiled (`'wasm-unsafe-eval'`, which allows nothing else).
const CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

/// The play page's policy: [`CSP`], plus fetching from any http(s) URL,
/// since `/play?replay=URL` loads a replay file from wherever a tester put
/// it (the file is data the WebAssembly module parses, never code).
const PLAY_CSP: &str = "default-src 'self'; connect-src 'self' http: https:; script-src 'self' 'wasm-unsafe-eval'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

/// Headers every embedded file carries: its type, no sniffing, a content
/// security policy ([`CSP`], or the play page's), and revalidation so a new
/// binary's assets are picked up.
fn respond(content_type: &'static str, body: impl Into<axum::body::Body>) -> Response {
    respond_with(content_type, CSP, body)
}

fn respond_with(
    content_type: &'static str,
    csp: &'static str,
    body: impl Into<axum::body::Body>,
) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(csp),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        body.into(),
    )
        .into_response()
}

/// The routes of the pages and their assets, for `game_url` (a template
/// containing `{code}`); with `admin`, the moderators' page too (never
/// cached).
pub fn router(game_url: &str, admin: bool) -> Router<AppState> {
    const HTML: &str = "text/html; charset=utf-8";
    let lobby = page(LOBBY_HTML, game_url);
    let play = page(PLAY_HTML, game_url);
    let host = page(HOST_HTML, game_url);
    let mut router = Router::new()
        .route("/", get(move || async move { respond(HTML, lobby) }))
        .route(
            "/play",
            get(move || async move { respond_with(HTML, PLAY_CSP, play) }),
        )
        .route("/host", get(move || async move { respond(HTML, host) }));
    for asset in ASSETS {
        let (content_type, body) = (asset.content_type, asset.body);
        router = router.route(
            asset.path,
            get(move || async move { respond(content_type, body) }),
        );
    }
    if admin {
        let admin_page = page(ADMIN_HTML, game_url);
        router = router
            .route(
                "/admin",
                get(move || async move { no_store(respond(HTML, admin_page)) }),
            )
            .route(
                "/web/admin.js",
                get(|| async { no_store(respond(JS, ADMIN_JS)) }),
            );
    }
    router
}

/// `response`, marked never to be stored by a cache.
fn no_store(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_carry_the_configuration_escaped() {
        let html = page(LOBBY_HTML, "https://g.example/p?a=1&code={code}\"");
        assert!(html.contains("content=\"https://g.example/p?a=1&amp;code={code}&quot;\""));
        assert!(html.contains(&format!("content=\"{BUILD_VERSION}\"")));
        assert!(!html.contains(CONFIG_PLACEHOLDER));
        for game_page in [PLAY_HTML, HOST_HTML] {
            let html = page(game_page, "/play?code={code}");
            assert!(!html.contains(GAME_PLACEHOLDER));
            assert!(
                html.contains(r#"<canvas id="view""#),
                "the game is in place"
            );
            assert_eq!(html.matches(r#"id="game""#).count(), 1);
        }
        assert!(!page(LOBBY_HTML, "").contains(r#"id="game""#));
        assert!(PLAY_HTML.contains(CONFIG_PLACEHOLDER));
        assert!(HOST_HTML.contains(CONFIG_PLACEHOLDER));
    }

    /// `spec` (`./x.js`, `../x.js` or absolute) relative to folder `dir`.
    fn resolve(dir: &str, spec: &str) -> String {
        if spec.starts_with('/') {
            return spec.to_owned();
        }
        let mut parts: Vec<&str> = dir.split('/').collect();
        for part in spec.split('/') {
            match part {
                "." => {}
                ".." => {
                    parts.pop();
                }
                p => parts.push(p),
            }
        }
        parts.join("/")
    }

    #[test]
    fn every_module_a_page_imports_is_served() {
        assert_eq!(
            resolve("/web/lib/render", "../facts.js"),
            "/web/lib/facts.js"
        );
        assert_eq!(resolve("/web", "./lib/wasm.js"), "/web/lib/wasm.js");
        let served: Vec<&str> = ASSETS.iter().map(|a| a.path).collect();
        for asset in ASSETS.iter().filter(|a| a.content_type == JS) {
            let body = std::str::from_utf8(asset.body).expect("scripts are UTF-8");
            for line in body.lines() {
                let Some(rest) = line.split(" from '").nth(1) else {
                    continue;
                };
                let Some(spec) = rest.split('\'').next() else {
                    continue;
                };
                let dir = asset.path.rsplit_once('/').map_or("", |(d, _)| d);
                let target = resolve(dir, spec);
                assert!(
                    served.contains(&target.as_str()),
                    "{} imports {spec}, which is not served",
                    asset.path
                );
            }
        }
    }
}
