"""cityseeker_ros/core/streets"""
