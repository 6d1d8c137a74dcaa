/// Gateway: see docs/ARCHITECTURE.md.
public enum GatewayModule {}
