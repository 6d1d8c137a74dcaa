/// Store: see docs/ARCHITECTURE.md.
public enum StoreModule {}
