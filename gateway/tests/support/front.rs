//! A subgraph front on loopback for the transport tests: it speaks only the HTTP
//! versions it is told to (optionally over TLS, with ALPN), decodes compressed request
//! bodies as a real server would (unknown encoding: 415, corrupt body: 400), forwards
//! them to a JSON subgraph, and compresses the answer when the request accepts it.
//! Every request is recorded as it arrived.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// Which HTTP versions the front speaks.
#[derive(Clone, Copy, Debug)]
pub enum Versions {
    /// HTTP/2 only (h2c with prior knowledge on plain TCP).
    H2Only,
    /// HTTP/1.1 and HTTP/2, told apart by the connection preface (or ALPN over TLS).
    Both,
}

/// What the front answers with beyond the forwarded JSON.
#[derive(Clone, Debug, Default)]
pub enum Answer {
    /// The subgraph's answer, uncompressed.
    #[default]
    Plain,
    /// The subgraph's answer in this encoding when the request's `Accept-Encoding`
    /// lists it (else plain).
    Encoded(&'static str),
    /// `size` bytes of spaces in gzip, whatever was asked: a decompression bomb.
    GzipBomb { size: usize },
}

/// One request as it arrived.
#[derive(Clone, Debug)]
pub struct Seen {
    pub version: http::Version,
    pub content_encoding: Option<String>,
    pub accept_encoding: Option<String>,
    /// The body as sent (encoded, if it was).
    pub raw: Bytes,
    /// The body decoded.
    pub body: Bytes,
}

pub struct Front {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

pub fn encode(encoding: &str, plain: &[u8]) -> Vec<u8> {
    match encoding {
        "gzip" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(plain).expect("gzip");
            e.finish().expect("gzip")
        }
        "br" => {
            let mut out = Vec::new();
            let mut e = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
            e.write_all(plain).expect("br");
            drop(e);
            out
        }
        "zstd" => zstd::bulk::compress(plain, 3).expect("zstd"),
        other => panic!("no encoder for {other}"),
    }
}

/// `body` decoded per `Content-Encoding`; `Err` is the status a server would answer.
fn decode(encoding: Option<&str>, body: &[u8]) -> Result<Vec<u8>, StatusCode> {
    let mut out = Vec::new();
    let read = match encoding {
        None | Some("identity") => return Ok(body.to_vec()),
        Some("gzip") => flate2::read::GzDecoder::new(body).read_to_end(&mut out),
        Some("br") => brotli_decompressor::Decompressor::new(body, 4096).read_to_end(&mut out),
        Some("zstd") => {
            zstd::stream::read::Decoder::new(body).and_then(|mut d| d.read_to_end(&mut out))
        }
        Some(_) => return Err(StatusCode::UNSUPPORTED_MEDIA_TYPE),
    };
    read.map(|_| out).map_err(|_| StatusCode::BAD_REQUEST)
}

/// A front for the JSON subgraphs at `backend` (`http://host:port`).
pub async fn start(
    backend: String,
    versions: Versions,
    tls: Option<rustls::ServerConfig>,
    answer: Answer,
) -> Front {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind an ephemeral loopback port");
    let addr = listener.local_addr().expect("bound address");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let acceptor = tls.map(|mut config| {
        config.alpn_protocols = match versions {
            Versions::H2Only => vec![b"h2".to_vec()],
            Versions::Both => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        };
        tokio_rustls::TlsAcceptor::from(Arc::new(config))
    });
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let state = (backend, answer, seen.clone(), client);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let state = state.clone();
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req| handle(state.clone(), req));
                match acceptor {
                    Some(acceptor) => {
                        let Ok(tls) = acceptor.accept(stream).await else {
                            return;
                        };
                        serve(TokioIo::new(tls), versions, service).await;
                    }
                    None => serve(TokioIo::new(stream), versions, service).await,
                }
            });
        }
    });
    Front { addr, seen }
}

async fn serve<I, S>(io: I, versions: Versions, service: S)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    S: hyper::service::Service<
            Request<hyper::body::Incoming>,
            Response = Response<Full<Bytes>>,
            Error = std::convert::Infallible,
        > + Send
        + 'static,
    S::Future: Send + 'static,
{
    // Connection errors (an HTTP/1.1 request to the h2-only front) end that connection.
    match versions {
        Versions::H2Only => {
            let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                .serve_connection(io, service)
                .await;
        }
        Versions::Both => {
            let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                .serve_connection(io, service)
                .await;
        }
    }
}

type State = (
    String,
    Answer,
    Arc<Mutex<Vec<Seen>>>,
    Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>,
);

async fn handle(
    (backend, answer, seen, client): State,
    req: Request<hyper::body::Incoming>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .map(|v| v.to_str().expect("ASCII header").to_owned())
    };
    let content_encoding = header("content-encoding");
    let accept_encoding = header("accept-encoding");
    let version = req.version();
    let uri = format!("{backend}{}", req.uri().path());
    let raw = req
        .into_body()
        .collect()
        .await
        .expect("request body")
        .to_bytes();
    let status_only = |status: StatusCode| {
        let mut r = Response::new(Full::new(Bytes::new()));
        *r.status_mut() = status;
        Ok(r)
    };
    let body = match decode(content_encoding.as_deref(), &raw) {
        Ok(body) => Bytes::from(body),
        Err(status) => return status_only(status),
    };
    seen.lock().expect("seen").push(Seen {
        version,
        content_encoding,
        accept_encoding: accept_encoding.clone(),
        raw,
        body: body.clone(),
    });
    let forwarded = Request::post(uri)
        .header("content-type", "application/json")
        .body(Full::new(body))
        .expect("forwarded request");
    let response = client
        .request(forwarded)
        .await
        .expect("JSON subgraph answers");
    let status = response.status();
    let plain = response
        .into_body()
        .collect()
        .await
        .expect("answer")
        .to_bytes();
    let accepts = |e: &str| {
        accept_encoding
            .as_deref()
            .is_some_and(|a| a.split(',').any(|x| x.trim() == e))
    };
    let (encoding, body) = match answer {
        Answer::Plain => (None, plain.to_vec()),
        Answer::Encoded(e) if accepts(e) => (Some(e), encode(e, &plain)),
        Answer::Encoded(_) => (None, plain.to_vec()),
        Answer::GzipBomb { size } => (Some("gzip"), encode("gzip", &vec![b' '; size])),
    };
    let mut builder = Response::builder()
        .status(status)
        .header("content-type", "application/json");
    if let Some(e) = encoding {
        builder = builder.header("content-encoding", e);
    }
    Ok(builder
        .body(Full::new(Bytes::from(body)))
        .expect("response"))
}
