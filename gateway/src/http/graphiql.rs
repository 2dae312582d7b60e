//! GraphiQL for browsers: a browser's GET on the GraphQL path (Accept: text/html, no
//! GraphQL request in the query string) gets the page, and `<graphql path>/graphiql/*`
//! its assets. GraphiQL, React and ReactDOM are the browser builds `build.rs` gzipped
//! into the binary from the npm versions `tools/graphiql/package-lock.json` pins; the
//! start-up script is ours. Queries from the page are ordinary POSTs with a JSON body, so
//! CSRF prevention and CORS apply to them as to any client.

use super::{HandlerBody, response};
use graphfleet_config::Config;
use hyper::header::{
    ACCEPT, ACCEPT_ENCODING, CACHE_CONTROL, CONTENT_ENCODING, HeaderValue, X_CONTENT_TYPE_OPTIONS,
};
use hyper::{Method, Request, Response, StatusCode};

/// Where the assets are served, under the GraphQL path.
const ASSET_DIR: &str = "/graphiql/";

/// What the page runs once GraphiQL is loaded: the fetcher for this gateway's endpoint
/// (and WebSocket, when subscriptions are on), rendered into `#graphiql`.
const START_JS: &str = r#"// graphfleet: GraphiQL against this gateway.
(function () {
  var root = document.getElementById("graphiql");
  var url = new URL(root.dataset.endpoint, location.href).href;
  var options = { url: url };
  if (root.dataset.websocket) {
    var ws = new URL(root.dataset.websocket, location.href);
    ws.protocol = location.protocol === "https:" ? "wss:" : "ws:";
    options.subscriptionUrl = ws.href;
  }
  var fetcher = GraphiQL.createFetcher(options);
  var element = React.createElement(GraphiQL, { fetcher: fetcher });
  ReactDOM.createRoot(root).render(element);
})();
"#;

/// (name, content type, gzipped bytes).
#[cfg(not(graphiql_off))]
const ASSETS: &[(&str, &str, &[u8])] = &[
    (
        "graphiql.min.js",
        "text/javascript; charset=utf-8",
        include_bytes!(concat!(env!("OUT_DIR"), "/graphiql.min.js.gz")),
    ),
    (
        "graphiql.min.css",
        "text/css; charset=utf-8",
        include_bytes!(concat!(env!("OUT_DIR"), "/graphiql.min.css.gz")),
    ),
    (
        "react.production.min.js",
        "text/javascript; charset=utf-8",
        include_bytes!(concat!(env!("OUT_DIR"), "/react.production.min.js.gz")),
    ),
    (
        "react-dom.production.min.js",
        "text/javascript; charset=utf-8",
        include_bytes!(concat!(env!("OUT_DIR"), "/react-dom.production.min.js.gz")),
    ),
];

#[cfg(graphiql_off)]
const ASSETS: &[(&str, &str, &[u8])] = &[];

/// Scripts only from here; GraphiQL sets inline styles and data: fonts and images; the
/// page talks only to this gateway (HTTP and WebSocket).
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
img-src 'self' data:; font-src 'self' data:; connect-src 'self' ws: wss:; base-uri 'none'; \
form-action 'none'; frame-ancestors 'none'";

/// The asset directory's path for `config`'s GraphQL path.
fn asset_dir(config: &Config) -> String {
    format!("{}{ASSET_DIR}", config.graphql_path.trim_end_matches('/'))
}

/// Whether `req` is a browser asking for the page: a GET (or HEAD) on the GraphQL path
/// preferring HTML, whose query string holds no GraphQL request.
pub(super) fn wants_page<B>(config: &Config, req: &Request<B>) -> bool {
    if !matches!(*req.method(), Method::GET | Method::HEAD)
        || req.uri().path() != config.graphql_path
    {
        return false;
    }
    let html = req
        .headers()
        .get_all(ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.split(',').any(|m| m.trim().starts_with("text/html")));
    let graphql = req.uri().query().is_some_and(|q| {
        q.split('&').any(|pair| {
            let key = pair.split('=').next().unwrap_or_default();
            matches!(key, "query" | "extensions" | "documentId" | "doc_id" | "id")
        })
    });
    html && !graphql && config.graphiql.serves(config.limits.introspection)
}

/// Whether `path` is one of the page's assets (served whether or not the page is on,
/// so a cached page never breaks; they hold nothing of the graph).
pub(super) fn is_asset(config: &Config, path: &str) -> bool {
    path.strip_prefix(&asset_dir(config))
        .is_some_and(|name| name == "start.js" || ASSETS.iter().any(|(n, ..)| *n == name))
}

/// The page.
pub(super) fn page(config: &Config) -> Response<HandlerBody> {
    if ASSETS.is_empty() {
        let body =
            "GraphiQL is not built into this gateway (it was built with GRAPHFLEET_GRAPHIQL=off)\n";
        return response(StatusCode::NOT_FOUND, "text/plain; charset=utf-8", body);
    }
    let dir = asset_dir(config);
    let endpoint = html_attr(&config.graphql_path);
    let websocket = match (
        config.subscriptions.enabled,
        &config.subscriptions.websocket_path,
    ) {
        (false, _) => String::new(),
        (true, path) => format!(
            " data-websocket=\"{}\"",
            html_attr(path.as_deref().unwrap_or(&config.graphql_path))
        ),
    };
    let body = format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>graphfleet · GraphiQL</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="{dir}graphiql.min.css">
<style>html, body, #graphiql {{ height: 100%; margin: 0; }}</style>
</head>
<body>
<div id="graphiql" data-endpoint="{endpoint}"{websocket}>Loading GraphiQL…</div>
<script src="{dir}react.production.min.js"></script>
<script src="{dir}react-dom.production.min.js"></script>
<script src="{dir}graphiql.min.js"></script>
<script src="{dir}start.js"></script>
</body>
</html>
"#
    );
    let mut r = response(StatusCode::OK, "text/html; charset=utf-8", body);
    let headers = r.headers_mut();
    headers.insert("content-security-policy", HeaderValue::from_static(CSP));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

/// One asset: gzipped as stored when the client takes gzip (every browser does), else
/// decoded.
pub(super) fn asset<B>(config: &Config, req: &Request<B>) -> Response<HandlerBody> {
    let name = req
        .uri()
        .path()
        .strip_prefix(&asset_dir(config))
        .unwrap_or_default();
    if name == "start.js" {
        return cached(response(
            StatusCode::OK,
            "text/javascript; charset=utf-8",
            START_JS,
        ));
    }
    let Some((_, content_type, gz)) = ASSETS.iter().find(|(n, ..)| *n == name) else {
        return response(StatusCode::NOT_FOUND, "text/plain", "not found\n");
    };
    let gzip = req
        .headers()
        .get_all(ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.split(',').any(|e| e.trim().starts_with("gzip")));
    let r = match gzip {
        true => {
            let mut r = response(StatusCode::OK, content_type, *gz);
            r.headers_mut()
                .insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            r
        }
        false => {
            use std::io::Read as _;
            let mut plain = Vec::new();
            flate2::read::GzDecoder::new(*gz)
                .read_to_end(&mut plain)
                .expect("build.rs wrote valid gzip");
            response(StatusCode::OK, content_type, plain)
        }
    };
    cached(r)
}

/// Assets change only with the binary: kept a day, revalidated by nothing else.
fn cached(mut r: Response<HandlerBody>) -> Response<HandlerBody> {
    let headers = r.headers_mut();
    headers.insert(
        CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=86400"),
    );
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    r
}

/// `text` safe inside a double-quoted HTML attribute.
fn html_attr(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(path: &str, accept: &str) -> Request<()> {
        Request::get(path)
            .header(ACCEPT, accept)
            .body(())
            .expect("a request")
    }

    const BROWSER: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

    #[test]
    fn only_a_browsers_plain_get_gets_the_page() {
        let config = Config::default();
        assert!(wants_page(&config, &get("/graphql", BROWSER)));
        assert!(!wants_page(&config, &get("/graphql", "application/json")));
        assert!(!wants_page(&config, &get("/graphql?query={a}", BROWSER)));
        assert!(!wants_page(
            &config,
            &get("/graphql?extensions={}", BROWSER)
        ));
        assert!(!wants_page(&config, &get("/other", BROWSER)));
        let post = Request::post("/graphql")
            .header(ACCEPT, BROWSER)
            .body(())
            .expect("a request");
        assert!(!wants_page(&config, &post));
    }

    #[test]
    fn it_follows_introspection_unless_set() {
        let mut config = Config::default();
        config.limits.introspection = false;
        assert!(!wants_page(&config, &get("/graphql", BROWSER)));
        config.graphiql.enabled = Some(true);
        assert!(wants_page(&config, &get("/graphql", BROWSER)));
        config.limits.introspection = true;
        config.graphiql.enabled = Some(false);
        assert!(!wants_page(&config, &get("/graphql", BROWSER)));
    }

    #[test]
    fn assets_live_under_the_graphql_path() {
        let config = Config {
            graphql_path: "/api/graphql".to_owned(),
            ..Config::default()
        };
        assert!(is_asset(&config, "/api/graphql/graphiql/start.js"));
        assert!(is_asset(&config, "/api/graphql/graphiql/graphiql.min.js"));
        assert!(!is_asset(&config, "/api/graphql/graphiql/../secret"));
        assert!(!is_asset(&config, "/graphql/graphiql/start.js"));
    }
}
