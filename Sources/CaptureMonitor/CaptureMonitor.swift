/// CaptureMonitor: see docs/ARCHITECTURE.md.
public enum CaptureMonitorModule {}
