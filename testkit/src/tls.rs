//! TLS for test servers: a CA made here and a certificate for 127.0.0.1 it signs, so a
//! test can serve HTTPS on loopback and hand clients the CA to trust (or not).

use std::sync::Arc;

/// An acceptor presenting a certificate for 127.0.0.1, and the PEM of the CA that
/// signed it.
pub fn loopback_acceptor() -> (tokio_rustls::TlsAcceptor, String) {
    let ca_key = rcgen::KeyPair::generate().expect("CA key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = params.self_signed(&ca_key).expect("self-signed CA");
    let issuer = rcgen::Issuer::new(params, ca_key);
    let key = rcgen::KeyPair::generate().expect("server key");
    let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .expect("server params")
        .signed_by(&key, &issuer)
        .expect("signed");
    let tls = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("TLS versions")
    .with_no_client_auth()
    .with_single_cert(
        vec![leaf.der().clone()],
        rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
    )
    .expect("server config");
    (tokio_rustls::TlsAcceptor::from(Arc::new(tls)), ca.pem())
}
