/// Packager: see docs/ARCHITECTURE.md.
public enum PackagerModule {}
