"""ROS 2 glue that needs no running graph: the process environment, message schemas, QoS and
conversions between core types and messages. The nodes in `cityseeker_ros.nodes` use them;
the core never imports this package."""
