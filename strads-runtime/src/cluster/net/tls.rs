//! Mutual TLS 1.3 from the job secret: every rank derives the same certificate authority
//! (its Ed25519 key from the secret by HKDF-SHA256), presents a certificate of its own
//! signed by it, and trusts that authority only. A process without the secret cannot make
//! a certificate the others accept, nor accept theirs.

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// The name every rank's certificate holds.
pub(crate) const SERVER_NAME: &str = "strads";
/// The application protocol.
pub(crate) const ALPN: &[u8] = b"strads/1";

/// A PKCS#8 v1 Ed25519 private key is this prefix and the 32-byte seed (RFC 8410).
const ED25519_PKCS8_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

struct Len32;
impl ring::hkdf::KeyType for Len32 {
    fn len(&self) -> usize {
        32
    }
}

/// The job CA's key: Ed25519 from the secret.
fn ca_key(secret: &[u8; 32]) -> Result<rcgen::KeyPair, String> {
    let prk = ring::hkdf::Salt::new(ring::hkdf::HKDF_SHA256, b"strads").extract(secret);
    let mut seed = [0u8; 32];
    prk.expand(&[b"strads job ca v1"], Len32)
        .and_then(|okm| okm.fill(&mut seed))
        .map_err(|_| "deriving the job's key failed".to_string())?;
    let mut der = ED25519_PKCS8_PREFIX.to_vec();
    der.extend_from_slice(&seed);
    rcgen::KeyPair::from_pkcs8_der_and_sign_algo(
        &PrivatePkcs8KeyDer::from(der),
        &rcgen::PKCS_ED25519,
    )
    .map_err(|e| format!("the job's key: {e}"))
}

fn ca_params() -> Result<rcgen::CertificateParams, String> {
    let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(|e| e.to_string())?;
    p.distinguished_name
        .push(rcgen::DnType::CommonName, "strads job CA");
    p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    p.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    p.not_before = rcgen::date_time_ymd(2024, 1, 1);
    p.not_after = rcgen::date_time_ymd(2100, 1, 1);
    Ok(p)
}

/// This rank's TLS configurations.
pub(crate) struct Tls {
    pub(crate) server: rustls::ServerConfig,
    pub(crate) client: rustls::ClientConfig,
}

/// The configurations of a rank of the job whose secret is `secret`.
pub(crate) fn configs(secret: &[u8; 32]) -> Result<Tls, String> {
    let e = |what: &str| {
        let what = what.to_string();
        move |err: rcgen::Error| format!("{what}: {err}")
    };
    let ca_key = ca_key(secret)?;
    let params = ca_params()?;
    let ca = params.self_signed(&ca_key).map_err(e("the job's CA"))?;
    let issuer = rcgen::Issuer::new(params, ca_key);
    let leaf_key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).map_err(e("a rank's key"))?;
    let mut lp = rcgen::CertificateParams::new(vec![SERVER_NAME.to_string()])
        .map_err(e("a rank's certificate"))?;
    lp.not_before = rcgen::date_time_ymd(2024, 1, 1);
    lp.not_after = rcgen::date_time_ymd(2100, 1, 1);
    let leaf = lp
        .signed_by(&leaf_key, &issuer)
        .map_err(e("a rank's certificate"))?;
    let ca_der: CertificateDer<'static> = ca.der().clone();
    let chain = vec![leaf.der().clone(), ca_der.clone()];
    let key = || PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(ca_der)
        .map_err(|e| format!("the job's CA: {e}"))?;
    let roots = Arc::new(roots);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        roots.clone(),
        provider.clone(),
    )
    .build()
    .map_err(|e| format!("the client verifier: {e}"))?;
    let mut server = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain.clone(), key())
        .map_err(|e| format!("this rank's certificate: {e}"))?;
    server.alpn_protocols = vec![ALPN.to_vec()];
    let mut client = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key())
        .map_err(|e| format!("this rank's certificate: {e}"))?;
    client.alpn_protocols = vec![ALPN.to_vec()];
    Ok(Tls { server, client })
}
