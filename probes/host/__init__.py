"""Host probes: netlink, ethtool, tc, netstat, RDMA sysfs, pcap, NVML, and the bundle of one host."""
