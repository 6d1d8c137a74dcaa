/// Player: see docs/ARCHITECTURE.md.
public enum PlayerModule {}
