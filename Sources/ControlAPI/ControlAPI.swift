/// ControlAPI: see docs/ARCHITECTURE.md.
public enum ControlAPIModule {}
