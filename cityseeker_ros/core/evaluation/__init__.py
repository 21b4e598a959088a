"""cityseeker_ros/core/evaluation"""
