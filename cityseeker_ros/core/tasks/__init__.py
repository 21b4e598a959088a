"""cityseeker_ros/core/tasks"""
