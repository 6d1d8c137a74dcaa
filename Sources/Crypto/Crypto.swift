/// Crypto: see docs/ARCHITECTURE.md.
public enum CryptoModule {}
