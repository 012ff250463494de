"""The embedded simulator: a popxl / popxl-addons subset with numeric execution and a compile
model that writes PopVision-like reports. It never pretends to be hardware."""
