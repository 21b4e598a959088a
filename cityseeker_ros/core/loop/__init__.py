"""cityseeker_ros/core/loop"""
