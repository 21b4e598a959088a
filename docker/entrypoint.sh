#!/bin/bash
# Source ROS 2 and the colcon workspace, then run the command (default: list the executables).
set -e
# shellcheck disable=SC1090
source "/opt/ros/${ROS_DISTRO:-jazzy}/setup.bash"
# shellcheck disable=SC1091
source /ws/install/setup.bash
exec "$@"
