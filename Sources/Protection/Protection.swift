/// Protection: see docs/ARCHITECTURE.md.
public enum ProtectionModule {}
