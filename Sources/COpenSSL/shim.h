// Shim for OpenSSL's libcrypto: EVP ciphers (AES-128-CBC, AES-256-GCM), HMAC, SHA-256 and the RNG.
#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#endif
