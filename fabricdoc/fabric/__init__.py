"""Building a Fabric: YAML files, generators, faults, ibnetdiscover records, ibsim net files, routes, host identity."""
