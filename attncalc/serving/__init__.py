"""What serving a model costs: parameters, the KV cache, time estimates, hardware presets."""
