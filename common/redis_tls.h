/* redis_tls: the TLS settings of the operator's Redis clients, one per set of credentials
 * (a RedisCluster's spec.tls Secret in cert-manager's layout: ca.crt, tls.crt, tls.key),
 * and the client sessions made from them for redis_stream.h.
 *
 * What a session verifies, always (there is no switch to turn it off):
 *   - the protocol: TLS 1.2 or 1.3 (OpenSSL's TLS 1.3 suites; for 1.2 the ECDHE AEAD suites
 *     of Mozilla's "intermediate" profile); no renegotiation, no compression;
 *   - the server's chain, up to a certificate of the CA bundle (ca_pem or ca_file; with
 *     neither, the system's trust store). A certificate of the bundle is a trust anchor
 *     even when it is an intermediate (as Go's crypto/tls treats its roots);
 *   - the validity period of every certificate of the chain (an expired or not yet valid
 *     one is refused);
 *   - the name: the session's server_name against the certificate's DNS names (SAN, no
 *     partial wildcards) and sent as SNI; without one, the IP address connected to
 *     against the certificate's IP SANs.
 * A client certificate and key (both or neither) are presented when the server asks
 * (Redis's tls-auth-clients).
 *
 * Keys are read without a passphrase prompt (an encrypted key is refused as unusable).
 * No error line contains key material.
 */
#ifndef RDC_REDIS_TLS_H
#define RDC_REDIS_TLS_H

#include <openssl/ssl.h>
#include <stddef.h>

typedef struct {
    const char *ca_pem;   /* trusted CA certificates, PEM (one or more); NULL: ca_file */
    size_t ca_len;
    const char *ca_file;  /* a PEM file of them; NULL with ca_pem NULL: the system's */
    const char *cert_pem; /* client certificate (then its chain), PEM; NULL: none */
    size_t cert_len;
    const char *key_pem;  /* its private key, PEM, not encrypted */
    size_t key_len;
} redis_tls_config_t;

typedef struct redis_tls redis_tls_t;

/* The settings of cfg (everything copied: cfg may go). NULL with one line in err when a
 * part is unusable ("CA bundle: no PEM certificate", "client key: not the certificate's
 * key", "CA file /x: No such file or directory") or memory ran out. */
redis_tls_t *redis_tls_new(const redis_tls_config_t *cfg, char *err, size_t errlen);

/* Free t; *t_p = NULL. NULL is fine. Sessions made from it keep what they need: t may go
 * while they live. */
void redis_tls_destroy(redis_tls_t **t_p);

/* A client session of t in connect state, for redis_stream_new_tls: it verifies
 * server_name (a DNS name, also sent as SNI; an IP literal is checked as an IP SAN)
 * or, when server_name is NULL or "", the address ip. NULL with one line in err when
 * neither is given or memory ran out. */
SSL *redis_tls_session(const redis_tls_t *t, const char *server_name, const char *ip, char *err, size_t errlen);

/* 1 when s is an IPv4 or IPv6 literal. */
int redis_tls_is_ip(const char *s);

#endif
