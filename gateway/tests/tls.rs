//! `https://` subgraphs: the gateway binary fetches over TLS, trusting a private CA
//! given the standard way (`SSL_CERT_FILE`), and refuses a subgraph whose certificate
//! it cannot verify.

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use support::process::{GatewayProcess, test_dir};
use tokio::net::{TcpListener, TcpStream};

/// A CA, and a certificate it signs for `localhost`: (CA PEM, server config).
fn certificates() -> (String, rustls::ServerConfig) {
    let ca_key = rcgen::KeyPair::generate().expect("CA key");
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "graphfleet test CA");
    let ca = ca_params.self_signed(&ca_key).expect("self-signed CA");
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate().expect("server key");
    let params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).expect("params");
    let cert = params.signed_by(&key, &issuer).expect("server certificate");
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("default TLS versions")
    .with_no_client_auth()
    .with_single_cert(
        vec![cert.der().clone()],
        rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
    )
    .expect("server certificate and key");
    (ca.pem(), config)
}

/// Terminates TLS on a loopback port and forwards the plain bytes to `backend`.
async fn tls_front(config: rustls::ServerConfig, backend: SocketAddr) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(stream).await else {
                    return; // the client refused our certificate
                };
                let Ok(mut plain) = TcpStream::connect(backend).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    addr
}

async fn query(gateway: &GatewayProcess) -> serde_json::Value {
    let reply = support::request(
        &support::client(),
        "POST",
        &gateway.url("/graphql"),
        &[("content-type", "application/json")],
        br#"{"query":"{ users { id } }"}"#.to_vec(),
    )
    .await;
    serde_json::from_slice(&reply.body).expect("JSON answer")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_subgraphs_are_fetched_over_tls_and_verified() {
    let (subgraphs, text) = support::fixture_subgraphs("keys").await;
    let backend: SocketAddr = subgraphs
        .base_url
        .trim_start_matches("http://")
        .parse()
        .expect("subgraph address");
    let (ca_pem, server_config) = certificates();
    let front = tls_front(server_config, backend).await;
    let https = text.replace(
        &subgraphs.base_url,
        &format!("https://localhost:{}", front.port()),
    );
    let dir = test_dir("tls");
    let supergraph = dir.join("supergraph.graphql");
    std::fs::write(&supergraph, https).expect("write the supergraph");
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca_pem).expect("write the CA");
    let args = [
        "--listen",
        "127.0.0.1:0",
        "--supergraph",
        supergraph.to_str().expect("UTF-8 path"),
    ];

    // Trusting the CA: answered over TLS.
    let ca = ca_file.to_str().expect("UTF-8 path");
    let trusting = GatewayProcess::start(&dir, &args, &[("SSL_CERT_FILE", ca)]).await;
    let body = query(&trusting).await;
    assert_eq!(
        body,
        serde_json::json!({"data": {"users": [{"id": "u1"}, {"id": "u2"}]}}),
        "{}",
        trusting.log()
    );
    drop(trusting);

    // Not trusting it: the fetch fails with an HTTP error naming the certificate.
    let empty = dir.join("no-ca.pem");
    std::fs::write(&empty, "").expect("write an empty bundle");
    let doubting = GatewayProcess::start(
        &dir,
        &args,
        &[("SSL_CERT_FILE", empty.to_str().expect("UTF-8 path"))],
    )
    .await;
    let body = query(&doubting).await;
    let message = body["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        body["errors"][0]["extensions"]["code"] == "SUBREQUEST_HTTP_ERROR"
            && message.to_lowercase().contains("certificate"),
        "{body}"
    );
}
