/// HTTPServer: see docs/ARCHITECTURE.md.
public enum HTTPServerModule {}
