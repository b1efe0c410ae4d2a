"""The registries and their validation: configuration, paper registries, dataset registry, runner parameters, methods."""
