"""nandlab gateware cores (LiteX): ONFI controller/PHY, power ring, telemetry, shared blocks."""
